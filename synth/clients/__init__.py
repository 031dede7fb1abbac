"""How a simulated agent writes one HTTP request with each client (curl, Python in its
habits, wget, HTTPie, netcat), and what that client prints; :mod:`.dispatch` picks one."""
