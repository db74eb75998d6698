// The `converge` command line tool; commands arrive with the issues that need them.
print("usage: converge <command>")
