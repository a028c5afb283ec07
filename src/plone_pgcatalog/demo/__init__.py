"""Demo machinery behind ``make run``: a local Plone site on the catalog."""
