#!/usr/bin/env node
// Postinstall of the npm package `ctxguard`: puts the native binary of this platform, from the
// optional dependency `@ctxguard/<platform>`, in place of bin/ctxguard.exe (the package's `bin`),
// so that `ctxguard` on PATH is the binary itself and no Node process starts on a hook call.
// `ctxguard install` then registers that binary's own path, which stays valid until the package
// is uninstalled.
//
// The file is named .exe on every platform: npm writes its Windows launcher (cmd-shim) at
// install time, before this runs, and for a file ending in .exe it writes a direct call.
// Without the platform package (--omit=optional, no build for this platform) it leaves the
// placeholder, which says what happened when run, and exits 0 so that npm keeps the install.
'use strict'
const fs = require('fs')
const path = require('path')

const pkg = require('./package.json')
const platform = `${process.platform}-${process.arch}`
const name = `@ctxguard/${platform}`
const file = process.platform === 'win32' ? 'ctxguard.exe' : 'ctxguard'

function say(line) {
  console.error(`ctxguard postinstall: ${line}`)
}

function main() {
  if (!(pkg.optionalDependencies || {})[name]) {
    say(`no build for ${platform} (there are: ${Object.keys(pkg.optionalDependencies || {}).join(', ')}); build it from source: cargo install ctxguard`)
    return
  }
  let dir
  try {
    // Beside this package (a global install of both tarballs) or inside it (npm's own
    // resolution of the optional dependency): Node's lookup finds either.
    dir = path.dirname(require.resolve(`${name}/package.json`, { paths: [__dirname] }))
  } catch {
    say(`${name} is not installed (npm --omit=optional?); reinstall ctxguard with its optional dependencies`)
    return
  }
  const found = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version
  if (found !== pkg.version) {
    say(`${name} is ${found}, not ${pkg.version}: not used; install both at ${pkg.version}`)
    process.exitCode = 1
    return
  }
  const src = path.join(dir, file)
  const dest = path.join(__dirname, 'bin', 'ctxguard.exe')
  const tmp = `${dest}.${process.pid}.tmp`
  try {
    fs.rmSync(tmp, { force: true })
    try {
      fs.linkSync(src, tmp) // same file system: no copy of the binary
    } catch {
      fs.copyFileSync(src, tmp)
    }
    fs.chmodSync(tmp, 0o755)
    fs.renameSync(tmp, dest) // a hook running right now sees the old file or the new, whole
  } catch (err) {
    fs.rmSync(tmp, { force: true })
    say(`could not put ${src} in place of ${dest}: ${err.message}`)
    process.exitCode = 1
  }
}

main()
