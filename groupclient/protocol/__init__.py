"""Protocol glue: Kafka wire framing, API tables and error codes shared by client and server."""
