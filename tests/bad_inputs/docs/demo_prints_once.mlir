// The Python demo prints its IR once and no numpy warning (spawned ranks must not re-run it).
// RUN: python examples/demo.py
// TIMEOUT: 120
// EXPECT-STDOUT: ^OK$
// EXPECT-NOT-STDOUT: (?s)fusion IR \(Python frontend\).*fusion IR \(Python frontend\)
// EXPECT-NOT-STDERR: (?i)numpy
