"""The companion card: the built Lovelace card, how HA serves it, and the events that feed it.

``resources`` serves ``companion-card.js`` and offers the ``companion_agent/subscribe``
WebSocket command (``websocket``); ``hub`` carries typed ``events`` to each subscriber, as
``timeline`` releases a turn's events when they are heard (``voice/sentence_timing``).
"""
