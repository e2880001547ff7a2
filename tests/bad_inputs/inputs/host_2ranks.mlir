// A valid host program on 2 ranks (allgather), with the fusion it implements as @reference.
builtin.module {
  hir.program @main(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
    %g = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    %w = hir.allgather %x -> %g team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    hir.wait %w
    hir.return %g : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  }
  fusion.func @reference(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
    %g = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    fusion.return %g : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  }
}
