"""The intermediate representation: one operation per statement, each with its origin."""
