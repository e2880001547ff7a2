// A pass spec with an unclosed '{': one line, no ArgSpecParseError traceback.
// RUN: hostir-opt %inputs/neg.mlir -p 'lower-to-host{'
// EXPECT-ERROR: ^error: .*(pass|pipeline|expected|'}')
