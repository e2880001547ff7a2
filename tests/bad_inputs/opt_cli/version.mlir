// --version names hostir and its version, not only xDSL's.
// RUN: hostir-opt --version
// EXPECT-STDOUT: hostir(-opt)? .*0\.1\.0
