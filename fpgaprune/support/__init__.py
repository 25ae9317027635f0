"""What every stage of fpgaprune uses and none owns: files written atomically, external tools run with a
time limit, text tables, lazy namespaces, optional extras, YAML schemas, the environment's checks and the quiet
console."""
