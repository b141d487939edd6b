"""`okra dashboard`: a live web view of Cells, ProgressiveRollouts and the inventory, with
the CLI's actions.

Modules: `group` (the command line; standard library only, as the parser needs),
`model` (pure: what each page shows, from the objects), `server` (aiohttp: the informers,
server-sent events, the actions) and `static/` (the page: plain HTML, CSS and JavaScript
served by the server itself, no build step and nothing from another host).
"""
