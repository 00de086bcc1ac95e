"""Playing against any player: the game session, the local web page's server (web/) and the terminal mode."""
