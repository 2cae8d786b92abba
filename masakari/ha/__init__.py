"""The rules of the API on top of the database: lookups, in-use checks, duplicates, maintenance.

Functions take the Database (and, for hosts, the Nova check) as parameters and return
rows detached from their session, ready to be shown.
"""
