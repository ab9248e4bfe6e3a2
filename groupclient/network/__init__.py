"""Network layer of the client: futures, broker connections, the selector-driven client, metadata."""
