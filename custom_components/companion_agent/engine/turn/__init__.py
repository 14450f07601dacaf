"""A turn: the handle a host holds, the tool loop, prompt assembly, history and usage."""
