"""The Jungle Engine Protocol (docs/protocol.md): its lines as typed objects (`protocol`), the engine that
serves any player spec over it (`engine`, the console script ``jungle-engine``) and its time management
(`timeman`)."""
