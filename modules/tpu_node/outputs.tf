# No outputs: nothing reads this root's state any more (destroy only, README.md).
