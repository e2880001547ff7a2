// --number-of-streams 0: refused before the ranks are spawned.
// RUN: hostir-run %inputs/neg.mlir --number-of-streams 0
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*number.of.streams must be at least 1
