"""Tests of agents/play/: the play page's server, its security, the browser and the terminal."""
