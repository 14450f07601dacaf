"""Memory retrieval: conclusions, details and the graph by relevance, keywords and topics."""
