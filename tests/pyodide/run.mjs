// Run driver.py inside Pyodide (Node): `node run.mjs JOB.json`.
//
// JOB.json is driver.py's job plus a "pyodide" object, written by environment.py:
//   module    path of the npm package's pyodide.mjs
//   packages  folder holding the verified numpy / micropip / packaging wheels (packageCacheDir),
//             so loadPackage reads them from disk and never reaches for the CDN
//   wheels    pure-Python wheels (flatbuffers, tflite) that micropip installs from the local disk
//   mounts    host folders made visible at the same absolute paths (the repository, the corpus, the
//             output folder), so paths, and the text `pytflite analyze` prints, match the native run
//   src       the folder put first on sys.path (the working tree's src/, not an installed pytflite)
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
await micropip.install(["emfs:" + wheel for wheel in setup["wheels"]], deps=False)
sys.path.insert(0, setup["src"])
sys.argv = [setup["driver"], job_path]
runpy.run_path(setup["driver"], run_name="__main__")
`);
