"""Constants of the Companion Agent integration."""

import logging

DOMAIN = "companion_agent"
LOGGER = logging.getLogger(__package__)

CONF_BASE_URL = "base_url"
CONF_MODEL = "model"
CONF_PROMPT = "prompt"
CONF_VOICE_APPROVAL = "voice_approval"

SUBENTRY_CONVERSATION = "conversation"
SUBENTRY_TTS = "tts"
CONF_VOICE = "voice"
CONF_SPEAKER = "speaker"
CONF_LANGUAGES = "languages"
DEFAULT_TTS_PORT = 10200
SUBENTRY_STT = "stt"
DEFAULT_STT_PORT = 10300
SUBENTRY_SATELLITE = "satellite"
DEFAULT_SATELLITE_PORT = 10700  # wyoming-satellite's usual port
CONF_AREA = "area"
CONF_ZEROCONF_NAME = "zeroconf_name"
CONF_ENGINE = "engine"  # absent: a Wyoming server
ENGINE_EMBEDDED = "embedded"
VOICES_FOLDER = "voices"  # <config>/companion_agent/voices/: <name>.onnx + <name>.onnx.json
PIPER_REQUIREMENT = "piper-tts>=1.8.0,<2"  # installed on demand, not in manifest.json
LAMEENC_REQUIREMENT = "lameenc>=1.9.0,<2"  # the MP3 encoder, on demand too (tts.py)
DEFAULT_CONVERSATION_NAME = "Companion"
STORAGE_FOLDER = "companion_agent"

CONF_PROFILE = "profile"
CONF_CONFIRM_TTL = "confirm_ttl"
DEFAULT_CONFIRM_TTL = 60
HELD_NOTICES_FILE = "held_notices.json"
"""``<entry id>.held_notices.json``: what held calls' people have not heard yet, over a reload."""
CONF_RETENTION_DAYS = "retention_days"
DEFAULT_RETENTION_DAYS = 30
CONF_FIRST_TOKEN_TIMEOUT = "first_token_timeout"
DEFAULT_FIRST_TOKEN_TIMEOUT = 8
CONF_BUSY_TIMEOUT = "busy_timeout"
"""A role's wait for a server that took the request but is busy (empty: the engine's 60 s)."""
CONF_TURNS_PER_MINUTE = "turns_per_minute"
CONF_ASLEEP_ENTITY = "asleep_entity"
DEFAULT_TURNS_PER_MINUTE = 20
SERVICE_CONFIRM_ACTION = "confirm_action"
EVENT_CONFIRMATION = f"{DOMAIN}_confirmation"
SIGNAL_USAGE = f"{DOMAIN}_usage"
DEFAULT_PROFILE = "default"
SERVICE_RELOAD = "reload"
EVENT_PROACTIVE = f"{DOMAIN}_proactive"
EVENT_ACTION = f"{DOMAIN}_action"
EVENT_SPOKE = f"{DOMAIN}_spoke"
SERVICE_START_CHAT = "start_chat"
SERVICE_ENROLL_VOICE = "enroll_voice"
SERVICE_FORGET_VOICE = "forget_voice"
ISSUE_SERVER_UNREACHABLE = "server_unreachable"
ISSUE_LOCAL_INTENTS = "local_intents"
ISSUE_COMPAT_RUNS = "compat_pipeline_runs"
ISSUE_COMPAT_PIPELINE_CHANGES = "compat_pipeline_changes"
ISSUE_COMPAT_CHIME = "compat_preannounce_chime"
HOST_PROMPT = "Stay in the persona described above."


def signal_library_reloaded(entry_id: str) -> str:
    """Return the dispatcher signal sent when an entry's plugins and profiles reload."""
    return f"{DOMAIN}_library_reloaded_{entry_id}"


def signal_persona_changed(persona_id: str) -> str:
    """Return the dispatcher signal sent when a persona's own settings changed."""
    return f"{DOMAIN}_persona_changed_{persona_id}"


def signal_emotion(persona_id: str) -> str:
    """Return the dispatcher signal sent when a persona shows an emotion."""
    return f"{DOMAIN}_emotion_{persona_id}"


CONF_MEMORY_BACKEND = "memory_backend"
MEMORY_EMBEDDED = "embedded"
MEMORY_MEM0 = "mem0"
MEMORY_BACKENDS = (MEMORY_EMBEDDED, MEMORY_MEM0)
CONF_MEMORY_GRAPH = "memory_neo4j"
CONF_NEO4J_URI = "neo4j_uri"
CONF_NEO4J_USER = "neo4j_user"
CONF_NEO4J_PASSWORD = "neo4j_password"
CONF_MEM0_URL = "mem0_url"
CONF_MEM0_API_KEY = "mem0_api_key"
CONF_EMBEDDINGS_URL = "embeddings_url"
CONF_EMBEDDINGS_MODEL = "embeddings_model"
CONF_EMBEDDINGS_KEY = "embeddings_key"
MEMORY_SECRETS = frozenset({CONF_NEO4J_PASSWORD, CONF_MEM0_API_KEY, CONF_EMBEDDINGS_KEY})
CONF_MEMORY_ENVIRONMENT = "memory_environment"
"""Entry data only (no form): tests set ``test`` so they never touch production memories."""
MEMORY_OUTBOX_FILE = "memory_outbox.db"
SERVICE_REMEMBER = "remember"
SERVICE_FORGET = "forget"
SERVICE_EXPORT_MEMORIES = "export_memories"
SERVICE_ROLLBACK_MEMORY = "rollback_memory"
ISSUE_MEMORY_UNREACHABLE = "memory_unreachable"
ISSUE_MEMORY_REQUIREMENTS = "memory_requirements"
ISSUE_MEMORY_FILE = "memory_file_moved"


def signal_memory_changed(entry_id: str) -> str:
    """Return the dispatcher signal sent when an entry's memories changed by hand."""
    return f"{DOMAIN}_memory_changed_{entry_id}"


CONF_ROLE_CHAT = "chat"
CONF_ROLE_VISION = "vision"
CONF_ROLE_MEMORY = "memory"
CONF_ROLE_SUMMARY = "summary"
ROLE_SECTIONS = (CONF_ROLE_CHAT, CONF_ROLE_VISION, CONF_ROLE_MEMORY, CONF_ROLE_SUMMARY)
"""A persona's model roles, in this order: each a section of its form (an AI task has chat
and vision). ``agent.roles.role_choices`` unpacks them in this order."""
TASK_SECTIONS = (CONF_ROLE_CHAT, CONF_ROLE_VISION)
CONF_TEMPERATURE = "temperature"
CONF_MAX_TOKENS = "max_tokens"
CONF_IMAGES = "images"
IMAGES_PROFILE = "profile"
IMAGES_ON = "on"
IMAGES_OFF = "off"
SUBENTRY_AI_TASK = "ai_task_data"
DEFAULT_AI_TASK_NAME = "Companion AI task"
