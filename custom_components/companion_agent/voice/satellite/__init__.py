"""The companion's own Wyoming satellite, behind ``assist_satellite.py``.

``connection``: one satellite kept connected, its events both ways. ``run``: one pipeline
run with state of its own; ``runs``: a satellite's runs, barge-in and follow-ups.
``voice``: what plays on its speaker. ``media``: an announcement's audio as PCM.
"""
