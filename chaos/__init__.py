"""The fault harness (issue 49): real processes, a fault-injecting proxy, a nemesis, a checker.

Brokers, leaders, followers and clients run as real processes on loopback;
the network between them goes through Toxiproxy; a seeded nemesis injects
network and process faults; every client operation is recorded and the
history is checked for linearizability by Porcupine (docs/reliability.md).
"""
