"""Speaking first: start_chat, the triggers' host side, a device's voice, the briefing."""
