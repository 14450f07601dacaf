"""The newcomer's demo: a real Home Assistant with the companion, brought up by ``script/demo``."""
