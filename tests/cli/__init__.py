"""Tests of the command line's help that suggests: did-you-mean for options and commands
(``test_suggest``), short flow ids (``test_flowids``), the text of each --help
(``test_help_text``), and a reproduce call without a reproducer (``test_usage``)."""
