"""The CLI's verbs, one file each (builder/commands/verb.py says what a file declares)."""
