// Placeholder of the built page (replaced by scripts/build-web's bundle).
document.getElementById("app")?.setAttribute("data-placeholder", "true");
