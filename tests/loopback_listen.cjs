// Preloaded (node -r) into a server that listens on every interface for want of a host
// setting (npm server-everything's streamable HTTP): a port alone is bound on 127.0.0.1.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (["number", "string"].includes(typeof args[0]) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
