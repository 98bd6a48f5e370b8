"""Test support shared by every test area: harnesses around real tools (see each module)."""
