"""The benchmarks behind ``plyarena bench MODE``: each module measures one part and renders its section.

Benchmarks are not bots and not the server: they drive both from the outside (or, for the store and the
moves, in process), so they may import every other room; nothing imports them but the command.
"""
