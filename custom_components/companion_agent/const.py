"""Constants of the Companion Agent integration."""

import logging

DOMAIN = "companion_agent"
LOGGER = logging.getLogger(__package__)

CONF_BASE_URL = "base_url"
CONF_MODEL = "model"
CONF_PROMPT = "prompt"
CONF_MAX_ROUNDS = "max_rounds"

SUBENTRY_CONVERSATION = "conversation"
DEFAULT_CONVERSATION_NAME = "Companion"
DEFAULT_MAX_ROUNDS = 6
STORAGE_FOLDER = "companion_agent"
