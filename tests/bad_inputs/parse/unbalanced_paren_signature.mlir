// An unclosed '(' in the signature: `{ fusion.return }` reads as the argument's attribute
// dictionary (a unit attribute named fusion.return), so the ')' is missing at the end of the file.
// RUN: hostir-opt %s
// EXPECT-ERROR@8:1: (?i)'\)' expected|expected '\)'
fusion.func @f(%a: !fusion.tensor<f32[4, 8]> {
  fusion.return
}
