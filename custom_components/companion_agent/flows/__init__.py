"""The sub-entry and option flows: personas, model roles, AI tasks, voices, STT, satellites.

The memory step of the options flow is here too; ``config_flow`` at the top (HA loads it by
name) holds the entry's own flow and names these as its sub-entry kinds.
"""
