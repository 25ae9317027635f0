"""What fpgaprune runs inside a training loop, whatever the framework: the hooks (`hooks`) and the guards
against inputs that would crash or hang it (`guards`)."""
