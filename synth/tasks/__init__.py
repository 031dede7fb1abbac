"""The 14 StealthBench tasks, one module each (its simulated app and one runner per
mode) beside its TOML file (prompt, opening and stuck thoughts, the modes); and the
pieces they share: openings, endings, sessions, shell steps, run length, the
internet, listeners (infra) and the URL-fetch tasks' moves (url_fetch)."""
