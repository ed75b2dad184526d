// Loaded with `node --import` into the node-opcua peer: the same heap and GC report as
// fieldgate's (src/server/diagnostics-report.ts), so both servers are measured by one yardstick.
import { installDiagnosticsReport } from "../../src/server/diagnostics-report.js";

installDiagnosticsReport();
