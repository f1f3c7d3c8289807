package main

// cScaffold is a C plugin: paths → templates. The C SDK's files are
// written beside them (writeCSDK).
var cScaffold = map[string]string{}

func writeCSDK(dir string) error { return nil }
