"""The test suite: folders mirror the packages (envs/, agents/), the entry scripts (scripts/) and bench/."""
