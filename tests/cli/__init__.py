"""Tests of the command line's help that suggests: did-you-mean for options, commands and
workflows (``test_suggest``), short flow ids (``test_flowids``), and what --help says about
--profile, --stage, --ci-repo and mcp (``test_help_text``)."""
