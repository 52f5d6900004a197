"""The dashboard's Jinja2 templates (autoescaped): ``base.html`` the frame, ``list.html`` and
``rows.html`` every flow, ``flow.html`` and ``jobs.html`` one flow, ``missing.html`` the 404."""
