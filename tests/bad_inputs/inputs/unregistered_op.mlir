// An op of an unknown dialect: valid with --allow-unregistered-dialect.
"foo.bar"() : () -> ()
