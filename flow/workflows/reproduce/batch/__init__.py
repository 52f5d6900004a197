"""``reproduce --batch FILE``: ``entries`` (the file's formats, buckets, Markdown and JSON
reports), ``steps`` (one flow sweeping every entry through the stages)."""
