"""The arena: tournaments between players, Bradley-Terry ratings and game records."""
