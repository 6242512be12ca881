// Placeholder: replaced as the target is written.
