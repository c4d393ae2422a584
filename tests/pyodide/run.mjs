// Run driver.py inside Pyodide (Node): `node run.mjs JOB.json`.
//
// JOB.json is driver.py's job plus a "pyodide" object, written by environment.py:
//   module    path of the npm package's pyodide.mjs
//   packages  folder holding the verified numpy / micropip / packaging wheels (packageCacheDir),
//             so loadPackage reads them from disk and never reaches for the CDN
//   wheels    pytflite's portable wheel (built from the working tree) and the pure-Python wheels it
//             requires (flatbuffers, tflite, ...), which micropip installs from the local disk; every
//             requirement pytflite's wheel declares must then be installed, as micropip.install
//             ("pytflite") would need it to be
//   mounts    host folders made visible at the same absolute paths (the repository, the corpus, the
//             output folder), so paths, and the text `pytflite analyze` prints, match the native run
//   driver    driver.py's path
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const jobPath = process.argv[2];
const job = JSON.parse(readFileSync(jobPath, "utf8"));
const setup = job.pyodide;
const { loadPyodide } = await import(pathToFileURL(setup.module).href);

const pyodide = await loadPyodide({ packageCacheDir: setup.packages });
await pyodide.loadPackage(["numpy", "micropip"], { messageCallback: () => {} });

const mounted = [];
for (const folder of [...setup.mounts].sort((a, b) => a.length - b.length)) {
  if (mounted.some((root) => folder === root || folder.startsWith(root + "/"))) continue; // already visible
  pyodide.FS.mkdirTree(folder);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: folder }, folder);
  mounted.push(folder);
}

pyodide.globals.set("job_path", jobPath);
pyodide.globals.set("setup", pyodide.toPy(setup));
await pyodide.runPythonAsync(`
import runpy, sys
import micropip
from importlib.metadata import PackageNotFoundError, requires, version
from packaging.requirements import Requirement
await micropip.install(["emfs:" + wheel for wheel in setup["wheels"]], deps=False)
for text in requires("pytflite"):
    needed = Requirement(text)
    if needed.marker is not None and not needed.marker.evaluate({"extra": ""}):
        continue
    try:
        found = version(needed.name)
    except PackageNotFoundError:
        raise SystemExit(f"pytflite's wheel requires {text}, which Pyodide does not have")
    if found not in needed.specifier:
        raise SystemExit(f"pytflite's wheel requires {text}; Pyodide has {needed.name} {found}")
sys.argv = [setup["driver"], job_path]
runpy.run_path(setup["driver"], run_name="__main__")
`);
