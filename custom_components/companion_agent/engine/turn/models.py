"""The models one turn uses (its persona's, each call timed for the host) and its camera tool."""

from __future__ import annotations

from ..llm import ChatModel
from ..llm.models import TimedModel
from ..tools.registry import Tool
from ..vision import VisionSummarizer, camera_tool
from .request import Persona, TurnRequest


def chat_model(request: TurnRequest) -> ChatModel:
    """Return the persona's chat model, timed when the host traces the turn."""
    persona = request.persona
    return _timed(request, persona.model, "chat", _name(persona, "chat"))


def camera_tools(request: TurnRequest) -> list[Tool]:
    """Return the camera tool when the host has cameras and the persona can see them."""
    persona, source = request.persona, request.host_cameras
    if source is None or (persona.vision is None and not persona.chat_sees_images):
        return []
    summarizer = None
    if persona.vision is not None and not persona.chat_sees_images:
        vision = _timed(request, persona.vision, "vision", _name(persona, "vision"))
        summarizer = VisionSummarizer(vision)
    tool = camera_tool(source, sees_images=persona.chat_sees_images, summarizer=summarizer)
    return [] if tool is None else [tool]


def _timed(request: TurnRequest, model: ChatModel, role: str, name: str) -> ChatModel:
    """Wrap ``model`` to tell the host's listener each call (unchanged without one)."""
    listener = request.on_model_call
    if listener is None:
        return model
    return TimedModel(model, role=role, name=name, listener=listener)


def _name(persona: Persona, role: str) -> str:
    """Return the name of the persona's model for ``role``, as far as it is known."""
    models = persona.models
    if models is None:
        return ""
    settings = models.vision if role == "vision" else models.chat
    return "" if settings is None else settings.model
