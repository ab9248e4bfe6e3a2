"""The consumer facade and the state it keeps: subscription, positions, fetched records."""
