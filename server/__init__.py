"""`metalog serve`: an HTTP/JSON API over the catalogs (a client and a follower in one process).

Import names from their modules (`server.app.create_app`, `server.catalogs.ServerSettings`).
"""
