"""The dashboard's static files: ``style.css`` and ``app.js`` (polling, filters, copy)."""
