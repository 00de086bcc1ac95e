"""Self-play spread over processes, Ray actors and inference servers.

The settings that travel to them, the workers, the pools that drive them and the server that batches their leaves.
"""
