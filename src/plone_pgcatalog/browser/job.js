/* plone_pgcatalog: a background job's progress, on the ZMI's job page and
   the control panel.  The page holds the job's elements (#job-phase,
   #job-bar, #job-state, #job-count, #job-elapsed, #job-result, #job-error,
   #job-lines if shown) and #job-status-url, whose data-url answers the
   job's status as JSON (the tool's manage_jobStatus); it is asked every
   half second until the job has ended.  A 404 means that another Zope
   instance answered, which does not have the job (jobs live in the
   process that started them). */
(function () {
  function text(id, value) {
    var element = document.getElementById(id);
    if (element) { element.textContent = value; }
  }
  function show(job) {
    text('job-phase', job.phase);
    document.getElementById('job-bar').style.width = (job.percent || 0) + '%';
    text('job-state', job.state);
    text('job-count', job.current + ' of ' + job.total);
    text('job-elapsed', job.elapsed);
    text('job-lines', job.lines.join('\n'));
    var result = document.getElementById('job-result');
    var error = document.getElementById('job-error');
    result.textContent = job.result;
    result.hidden = job.state !== 'done';
    error.textContent = job.error;
    error.hidden = job.state !== 'failed';
    if (job.state === 'running') { setTimeout(poll, 500); }
  }
  function poll() {
    var url = document.getElementById('job-status-url').dataset.url;
    fetch(url, {credentials: 'same-origin', cache: 'no-store'})
      .then(function (answer) {
        if (answer.status === 404) { throw 'gone'; }
        return answer.json();
      })
      .then(show)
      .catch(function (reason) {
        if (reason === 'gone') {
          text('job-state', 'unknown: this Zope process does not have the job'
               + ' (another instance answered?)');
          return;
        }
        setTimeout(poll, 2000);
      });
  }
  poll();
})();
