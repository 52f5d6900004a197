"""``reproduce --batch FILE``: ``entries`` (the file's formats, buckets, Markdown and JSON
reports), ``limits`` (the bounds every call checks), ``steps`` (one flow sweeping every
entry through the stages)."""
