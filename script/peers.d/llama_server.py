"""Serve a GGUF model with llama.cpp's own server (xllamacpp) until SIGTERM or SIGINT.

Run by the venv ``script/peers.d/llama`` builds: ``python llama_server.py --model M --port P``.
The OpenAI-compatible ``/v1/chat/completions`` renders the model's own chat template with
Jinja (``--jinja``, as HA's llama.cpp integration expects), on 127.0.0.1, one slot, one
thread (two threads were slower on a two-core machine), greedy sampling (temperature 0,
a fixed seed) unless a request asks for other values. Prints ``listening <url>`` once up.
"""

import argparse
import signal

import xllamacpp


def main() -> None:
    """Start the server from the command line's arguments; stop it on a signal."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default="SmolLM2-135M-Instruct")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--temperature", type=float, default=0.0)
    args = parser.parse_args()
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.n_parallel = 1
    params.n_ctx = args.context
    params.sampling.temp = args.temperature
    params.sampling.seed = args.seed
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    main()
