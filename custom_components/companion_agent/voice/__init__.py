"""Voice glue: Piper installed on demand, head starts, the voices on offer, playback, pipelines."""
