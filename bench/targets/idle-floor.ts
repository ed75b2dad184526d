// The floor of the memory figures: bare Node, run with the gateway's flags and environment, that
// holds its event loop open and does nothing else (`node <flags> dist/bench/targets/idle-floor.js`).
// What a gateway's process holds above it is what fieldgate adds.
setInterval(() => undefined, 1 << 30);
console.log("idle-floor: running");
