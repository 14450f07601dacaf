"""The audit trail: one redacted record per tool call attempt, appended off the event loop."""
